"""Estimators where the mmpose/mmseg classes do not fit."""
