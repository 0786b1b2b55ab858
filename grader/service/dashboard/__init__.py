"""What staff read: the gradebook and statistics, charts, regrades, rosters and exports (CSV, Gradescope)."""
