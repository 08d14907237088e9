"""The observation table's name, written once for both engines' index DDL and ranked statements."""

OBSERVATION_TABLE = "ilab_memory_observation"
