"""Storage backends chosen by URL: memory:, sqlite:, redis://."""
