"""The domain: what may be proposed, how it is frozen, checked, executed and reported."""
