"""A kernel package of our own: kern.py imports its helpers relatively."""
