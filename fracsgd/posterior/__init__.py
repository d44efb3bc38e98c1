"The posterior side: clusters of solutions in function space and the tempered comparison with SGLD samples."
