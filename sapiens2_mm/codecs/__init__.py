"""Keypoint codecs that differ from mmpose's."""
