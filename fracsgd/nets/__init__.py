"The networks: fully connected and deep linear nets, the conv and residual nets of tables 5-6, and many same-architecture nets stacked as one."
