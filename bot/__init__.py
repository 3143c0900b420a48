"""The edges: Slack app, agent HTTP API, rendering, settings, CLI."""
