"""Out-of-band topology manager: NUMA hints from providers, merged by a policy."""
