"""The observation table's name, for both engines' index DDL and ranked statements."""

from ...models import Observation

OBSERVATION_TABLE = Observation._meta.db_table
