"Speed measured, not claimed: the benchmarks of the recorder, the LLC and the ensemble trainer."
