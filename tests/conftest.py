"""Shared fixtures. Each test area keeps its own fixtures beside its tests."""
