"""Tracing a confined run: see tracer.py."""
