"""Level-of-detail index (in memory, or in windows over a spilled trace) and the binary tiles the viewer
draws."""
