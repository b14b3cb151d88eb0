"""Read models of the console's pages: plain values built from the store's protocols."""
