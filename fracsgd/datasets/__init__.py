"Dataset loaders, one module per dataset family (see the data chapter); each exported from its own notebook."
