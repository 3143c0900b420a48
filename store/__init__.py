"""Durable state: proposals, decisions and the audit log."""
