"""Runtime checks inside training frameworks: callbacks that watch the steps the framework runs."""
