"""The object store: one write path (metadata, concurrency, deletion, GC), watches, persistence."""
