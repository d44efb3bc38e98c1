"Running experiments: the sweep, the result store and the study runner."
