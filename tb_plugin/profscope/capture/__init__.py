"""Capturing a profile from running jobs' profiler servers into the logdir (docs/CAPTURE.md): the
`ProfilerService.Profile` messages (`protocol`), one call (`client`), which addresses may be reached
(`addresses`), a session of several servers landed or cleaned up (`session`), the plugin's routes
(`route`) and `profscope capture` (`cli`)."""
