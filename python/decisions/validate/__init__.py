"""decisions.validate: one stage of the chain. Its public names are re-exported by
``decisions``; ``__all__`` lists the modules."""

__all__ = ["decide", "decision", "domain", "policy", "schema", "versions"]
