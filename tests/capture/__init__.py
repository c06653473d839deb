"""Tests of capturing a profile from a profiler server into the logdir (`profscope.capture`)."""
