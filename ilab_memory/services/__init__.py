"""Writes and lifecycle rules. Every public function is keyword-only and transactional."""
