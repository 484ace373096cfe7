"""pytest plugin (placeholder until the plugin lands)."""
