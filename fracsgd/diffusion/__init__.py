"Reading trajectories: spectral fits, the crossover, jumps, ageing, return probabilities, walks on known landscapes, the theory's relations, the analysis of one trained net."
