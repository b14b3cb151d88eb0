"""The chat commands (/status, /compress, /summary, ...) behind one admin filter."""
