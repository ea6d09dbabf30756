"""Run planning (``xurs plan``): parameter counts from the model config (no weights loaded), peak memory
per stage, gradient evaluations and projected time on a named device, before a run is started.

- ``shapes``: the backbone config of ``model.*`` and the classifier's parameter counts on the meta device.
- ``devices``: the device table (memory) and the local machine.
- ``estimate``: memory per stage, gradient evaluations, time, and the keys to change when it does not fit.
- ``measure``: per-sample seconds of attribution gradients and training steps, timed here.
"""
