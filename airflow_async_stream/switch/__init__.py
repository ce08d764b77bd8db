"""Changing a running job in place: which spec changes a running driver may make, and the request to it."""
