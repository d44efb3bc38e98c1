"The local learning coefficient: SGLD settings and sampler, the estimate with its localization step, criticality and the radius test, deep linear networks, validation against exact truths."
