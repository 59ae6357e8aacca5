"""The command line's modules: each exports `register(app)` adding its commands."""
