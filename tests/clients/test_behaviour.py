"""The facade's own behaviour tests, run once with the facade and once with ``MemoryClient``
against the live site (the ``mem`` fixture of this folder), so the two faces cannot drift.

Every test here is imported from the facade's test modules as it is written there; only the
tests that need the facade's process (a stopped clock, threads, settings overrides, the
database's internals) stay with the facade alone.
"""

from tests.test_document import test_import_of_a_non_object_is_a_validation_error  # noqa: F401
from tests.test_erasure import (  # noqa: F401
    test_forget_leaves_no_search_index_entry,
    test_forget_of_an_unknown_user_erases_nothing,
    test_forget_rejects_a_bad_user_id,
)
from tests.test_facade import (  # noqa: F401
    test_a_count_out_of_its_bounds_names_the_field_and_the_limit,
    test_every_text_argument_is_validated_like_the_api,
    test_list_sessions_filters_by_a_valid_status,
    test_list_sessions_refuses_a_status_that_is_not_one,
    test_other_bad_arguments_are_validation_errors,
    test_returned_timestamps_are_iso_utc_strings,
)
from tests.test_observations import (  # noqa: F401
    test_bad_shapes_are_rejected_and_nothing_stored,
    test_bad_user_id_is_rejected,
    test_blank_topic_key_means_none,
    test_context_preview_is_cut_at_300_characters_with_ellipsis,
    test_create_belongs_to_the_active_session,
    test_deeply_nested_metadata_is_rejected,
    test_delete_hard_must_be_a_bool,
    test_delete_of_another_users_observation_is_not_found,
    test_deleted_observation_is_not_a_duplicate_target,
    test_different_type_title_or_content_is_not_a_duplicate,
    test_get_of_another_users_observation_is_not_found,
    test_get_returns_full_content,
    test_get_with_unknown_or_malformed_id_is_not_found,
    test_hard_delete_removes_row_and_history,
    test_hard_delete_works_on_a_soft_deleted_observation,
    test_huge_metadata_integers_are_rejected,
    test_limits_count_characters_not_bytes,
    test_other_users_identical_save_is_not_a_duplicate,
    test_over_limit_save_is_rejected_naming_field_limit_and_size,
    test_save_defaults_to_manual_type_and_empty_metadata,
    test_save_result_and_record_are_frozen,
    test_session_records_carry_plain_string_status,
    test_soft_delete_hides_everywhere_but_keeps_the_row,
    test_soft_deleted_topic_is_not_revised,
    test_stats_counts_the_users_rows_only,
    test_timeline_bounds_are_validated,
    test_topic_key_is_normalized,
    test_topic_keys_are_per_user,
    test_update_can_set_and_clear_topic_key,
    test_update_of_another_users_observation_is_not_found,
    test_update_of_deleted_observation_is_not_found,
    test_update_rejects_unknown_fields,
    test_update_requires_at_least_one_field,
    test_update_to_a_taken_topic_key_is_rejected,
    test_user_id_is_stripped,
    test_user_id_of_255_characters_is_accepted,
    test_validation_messages_never_echo_the_value,
    test_values_at_the_limit_are_accepted_untruncated,
)
from tests.test_scopes import (  # noqa: F401
    test_a_search_by_meaning_keeps_to_the_scopes_it_reads,
)
from tests.test_search import (  # noqa: F401
    corpus,
    test_another_users_perfect_match_never_appears,
    test_bad_limit_is_a_validation_error,
    test_bad_min_score_is_a_validation_error_naming_it_and_its_limit,
    test_bad_type_is_a_validation_error,
    test_blank_query_is_a_validation_error,
    test_fuzzed_queries_raise_nothing_but_validation_errors,
    test_min_score_leaves_out_the_results_scoring_below_it,
    test_only_punctuation_finds_nothing,
    test_operator_and_punctuation_input_never_raises_engine_errors,
    test_over_long_query_is_a_validation_error_naming_the_limit,
    test_private_text_is_never_searchable,
    test_same_corpus_gives_the_expected_top_results,
    test_soft_deleted_rows_are_never_returned,
    test_type_filter,
)
from tests.test_sessions import (  # noqa: F401
    test_end_argument_replaces_the_stored_narrative,
    test_end_twice_raises_the_second_time,
    test_end_with_blank_summary_never_wipes_a_stored_one,
    test_end_with_over_limit_summary_changes_nothing,
    test_end_without_active_session_raises_no_active_session,
    test_end_without_any_summary_writes_the_synthetic_one,
    test_end_without_summary_keeps_the_stored_narrative,
    test_get_and_list_sessions_are_scoped_by_user,
    test_session_summary_at_limit_is_accepted,
    test_session_summary_over_limit_is_rejected_and_nothing_stored,
    test_session_summary_rejects_blank,
    test_session_summary_stores_narrative_without_closing,
    test_sessions_context_never_includes_another_users_sessions,
    test_start_after_end_opens_a_new_session_and_shows_the_summary,
    test_start_response_is_a_frozen_dataclass_with_four_fields,
    test_summary_without_start_creates_an_implicit_session,
)
