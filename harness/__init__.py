"""Harness adapters: one module per harness (parse payloads, render hook output, generate config).

Adapters depend only on :mod:`hookd.models` and pure helpers; they do no I/O policy.
"""
