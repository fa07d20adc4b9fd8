"""The race server: protocol, races, tournaments, ratings, stores, transport."""
