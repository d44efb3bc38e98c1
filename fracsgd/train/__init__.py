"Training: the plain loop, the displacement recorder, the stacked optimizer, chunk plans and ensembles trained at once."
