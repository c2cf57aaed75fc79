"""Security invariants pinned end to end: CSRF, authorization, Secret values, escaping, session
isolation and error hygiene, through the example application and a minimal host."""
