"The claims ledger: the paper's claims, where each result came from, and the checks that read no training."
