"""The period a search query talks about: "yesterday", "last week", "in March", "el mes pasado".

``read_period`` finds the first date phrase of a query, English or Spanish, and returns the
calendar period it names in the user's time zone: a day, a Monday-start week, a month or a year.
Search weighs it as evidence, never as a filter, so a wrong reading costs order, not answers.

The reading is dateparser's (``DateDataParser.get_date_data``: a date and its period). What is
ours is where to look and what to refuse, both taken from dateparser's own English and Spanish
words (``Vocabulary``):

* **Where**: runs of the query's words that dateparser knows (month and weekday names, units,
  "ago", "hace", "yesterday", "el mes pasado"'s words, numbers), each run tried whole, then
  shorter, longest first. A query without such a word costs no parse at all.
* **What to refuse**: a phrase needs one *anchor*, a word that names a day or longer on its own
  terms. A unit ("day", "week", "año") anchors only beside a word that places it in time ("ago",
  "last", "this", "hace", "pasado"): alone it is a length or a frequency ("a week", "in a day",
  "the last four months", "my previous year's time"), which dateparser would read as a date.
  Abbreviations of month and weekday names are no anchors ("we" is Wednesday, "sat"
  Saturday, "mar" March and martes, "may" mayo's short form, "mi" miércoles): they are everyday
  words far more often than dates. Neither is a bare number below four digits ("version 2"),
  nor a word of hours, minutes and seconds ("now", "second"): a moment, not a period.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from functools import lru_cache

LANGUAGES = ("en", "es")
# The longest phrase tried: "el 3 de mayo de 2025".
MAX_PHRASE_WORDS = 6
# The parses one query may cost, whatever its length (each is about a millisecond).
MAX_PARSES = 12
# Four digits read as a year only in this range: "port 8080" and "error 1234" are no years.
YEARS = range(1900, 2101)

# Spanish number words dateparser does not read (it reads "un"/"una", and English up to "twelve"):
# without them "hace dos días" finds nothing.
SPANISH_NUMBERS = {"dos": "2", "tres": "3", "cuatro": "4", "cinco": "5", "seis": "6", "siete": "7",
                   "ocho": "8", "nueve": "9", "diez": "10", "once": "11", "doce": "12"}

# Words and dates written with separators ("2025-05-03", "3/5/2025" stay one word).
_WORD = re.compile(r"\w+(?:[-/.:]\w+)*")
_DIGITS = re.compile(r"\d")
_FULL_DATE = re.compile(r"\d{4}[-/.]\d{1,2}(?:[-/.]\d{1,2})?|\d{1,2}[-/.]\d{1,2}[-/.]\d{4}")

_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
          "october", "november", "december", "monday", "tuesday", "wednesday", "thursday", "friday",
          "saturday", "sunday")
_DAY_UNITS = ("day", "week", "month", "year", "decade")
_SUB_DAY_UNITS = ("hour", "minute", "second")


def fold(word: str) -> str:
    """Lower case without accents, so "dias" is "días"."""
    return "".join(c for c in unicodedata.normalize("NFD", word.lower()) if not unicodedata.combining(c))


@dataclass(frozen=True)
class Period:
    """A span of time a query names: [start, end), in UTC, the user's midnights."""

    start: datetime
    end: datetime
    phrase: str  # the words of the query that named it, as written

    def __contains__(self, moment: datetime) -> bool:
        return self.start <= moment < self.end


# "mañana" is tomorrow and the morning ("esta mañana", "por la mañana"): no anchor on its own.
AMBIGUOUS = frozenset({"manana"})


@dataclass(frozen=True)
class Vocabulary:
    """dateparser's English and Spanish date words, folded, sorted by the part they play."""

    anchors: frozenset[str]  # a full name, a unit of a day or more, "yesterday"/"ayer"
    units: frozenset[str]  # the anchors that are units: "day", "weeks", "mes"
    placers: frozenset[str]  # what places a unit in time: "ago", "last", "this", "hace", "pasado"
    connectors: frozenset[str]  # may sit inside a phrase, never make one: "of", "last", "hace"
    # A full name in one language and a short form in another ("may", mayo's): an anchor only
    # after "in"/"en" or before a number ("in May", "May 3"), as "the deploy may fail" is not.
    contextual: frozenset[str]
    prepositions: frozenset[str]  # "in", "en", "after": never a phrase's end
    fillers: frozenset[str]  # words dateparser skips ("the", "about", "de"): never a phrase's start or end

    def is_date_word(self, word: str) -> bool:
        return (word in self.anchors or word in self.connectors or word.isdecimal() or word in SPANISH_NUMBERS
                or bool(_FULL_DATE.fullmatch(word)))

    def names_a_time(self, phrase: list[str]) -> bool:
        """Whether a phrase holding an anchor names a time rather than a length: a unit needs a placer."""
        anchors = [word for word, anchored in zip(phrase, self.anchored(phrase)) if anchored]
        return any(word not in self.units for word in anchors) or any(word in self.placers for word in phrase)

    def anchored(self, run: list[str]) -> list[bool]:
        """Which words of a run can make a phrase."""
        return [self._is_anchor(word, run[i - 1] if i else "", run[i + 1] if i + 1 < len(run) else "")
                for i, word in enumerate(run)]

    def _is_anchor(self, word: str, before: str, after: str) -> bool:
        if _DIGITS.search(word):
            return bool(_FULL_DATE.fullmatch(word)) or (word.isdecimal() and int(word) in YEARS)
        if word in self.contextual:
            return before in self.prepositions or after.isdecimal()
        return word in self.anchors


@lru_cache(maxsize=1)
def vocabulary() -> Vocabulary:
    from dateparser.languages.loader import LocaleDataLoader

    anchors: set[str] = set()
    connectors: set[str] = set()
    full_names: set[str] = set()
    short_forms: set[str] = set()
    sub_day: set[str] = set()
    units: set[str] = set()
    placers: set[str] = set()
    prepositions: set[str] = set()
    fillers: set[str] = set()
    for language in LANGUAGES:
        info = LocaleDataLoader().get_locale(language).info
        for name in _NAMES:
            forms = [fold(form) for form in info.get(name, [])]
            longest = max(forms, key=len, default="")
            full_names.add(longest)
            short_forms.update(form for form in forms if form != longest)
        for unit in _DAY_UNITS + _SUB_DAY_UNITS:
            unit_forms = {fold(form) for form in info.get(unit, []) if len(form) > 1}
            (anchors if unit in _DAY_UNITS else sub_day).update(unit_forms)
            if unit in _DAY_UNITS:
                units.update(unit_forms)
        for key, phrases in info.get("relative-type", {}).items():
            for phrase in map(fold, phrases):
                words = phrase.split()
                if len(words) == 1 and not any(unit in key for unit in _SUB_DAY_UNITS):
                    anchors.add(phrase)  # "yesterday", "hoy", "anteayer"
                else:
                    connectors.update(words)  # "last", "el", "pasado", "now"
                    placers.update(words)
        placers.update(word for form in info.get("ago", []) for word in fold(form).split())
        for key in ("skip", "pertain", "ago", "in"):
            connectors.update(word for form in info.get(key, []) for word in fold(form).split())
        fillers.update(fold(form) for form in info.get("skip", []) if " " not in form.strip())
        prepositions.update(fold(form) for form in info.get("in", []) if " " not in form)
        # "a week ago", "hace un mes": dateparser reads these as numbers.
        connectors.update(fold(word) for rule in info.get("simplifications", []) for word in rule
                          if word.isalpha())
    anchors = (anchors | full_names) - short_forms - sub_day - AMBIGUOUS
    return Vocabulary(
        anchors=frozenset(anchors),
        units=frozenset(units),
        placers=frozenset(placers - units - sub_day),
        connectors=frozenset(connectors | short_forms | sub_day | AMBIGUOUS),
        contextual=frozenset(full_names & short_forms),
        prepositions=frozenset(prepositions),
        fillers=frozenset(fillers - prepositions),
    )


@lru_cache(maxsize=4)
def parser_for(today: date):
    """One parser per day the process reads queries on.

    dateparser keeps every distinct settings object for the life of the process and keys its
    caches by them, so the base is the day (one a day) rather than the moment (one a query).
    """
    from dateparser import DateDataParser

    return DateDataParser(languages=list(LANGUAGES), settings={
        "RELATIVE_BASE": datetime.combine(today, time.min),
        "PREFER_DATES_FROM": "past",  # "in March" asked in February is last year's
    })


def read_period(query: str, *, now: datetime, time_zone: tzinfo) -> Period | None:
    """The period the first date phrase of ``query`` names, read at ``now`` in ``time_zone``."""
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError("now must be an aware datetime")
    if not isinstance(query, str):
        return None
    today = now.astimezone(time_zone).date()
    words = vocabulary()
    found = [(match, fold(match.group())) for match in _WORD.finditer(query)]
    parses = 0
    for run in _runs(found, words):
        anchored = words.anchored([word for _, word in run])
        for first, last in _spans(len(run)):
            if not any(anchored[first:last]) or not words.names_a_time([word for _, word in run[first:last]]):
                continue
            if parses == MAX_PARSES:
                return None
            parses += 1
            phrase = query[run[first][0].start():run[last - 1][0].end()]
            read = _parse(phrase, today)
            if read is not None:
                bounds = _bounds(*read, time_zone)
                if bounds is not None:
                    return Period(*bounds, phrase=phrase)
    return None


def _runs(found, words: Vocabulary):
    """Stretches of consecutive date words that hold an anchor."""
    run: list = []
    for item in [*found, None]:
        if item is not None and words.is_date_word(item[1]):
            run.append(item)
            continue
        while run and (run[-1][1] in words.fillers or run[-1][1] in words.prepositions):
            run.pop()  # "last week about the deploy" names "last week"
        while run and run[0][1] in words.fillers:
            run.pop(0)  # "notas de hoy" names "hoy"
        if any(words.anchored([word for _, word in run])):
            yield run
        run = []


def _spans(length: int):
    """(first, last) of the stretches of a run up to ``MAX_PHRASE_WORDS`` long, longest first."""
    for size in range(min(length, MAX_PHRASE_WORDS), 0, -1):
        for first in range(length - size + 1):
            yield first, first + size


def _parse(phrase: str, today: date) -> tuple[date, str] | None:
    text = " ".join(SPANISH_NUMBERS.get(fold(word), word) for word in phrase.split())
    try:
        data = parser_for(today).get_date_data(text)
    except Exception:  # noqa: BLE001 -- dateparser failing on odd text must never fail a search
        return None
    if data.date_obj is None or data.period not in ("day", "week", "month", "year"):
        return None
    return data.date_obj.date(), data.period


def _bounds(day: date, period: str, time_zone: tzinfo) -> tuple[datetime, datetime] | None:
    if day.year == date.max.year:
        return None  # its end would not be a date
    if period == "week":
        first = day - timedelta(days=day.weekday())
        after = first + timedelta(days=7)
    elif period == "month":
        first = day.replace(day=1)
        after = (first + timedelta(days=32)).replace(day=1)
    elif period == "year":
        first = day.replace(month=1, day=1)
        after = first.replace(year=first.year + 1)
    else:
        first, after = day, day + timedelta(days=1)
    # In UTC: subtracting two datetimes of one zone ignores a change of clocks between them.
    start, end = (datetime.combine(edge, time.min, time_zone).astimezone(UTC) for edge in (first, after))
    return start, end
