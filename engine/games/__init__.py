"""The rule families: Klondike, Colorado, Terrace and British Square."""
