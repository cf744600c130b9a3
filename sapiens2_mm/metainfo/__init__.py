"""Dataset meta information shipped as package data (json + mmpose-style .py)."""
