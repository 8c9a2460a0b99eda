//! PNG line charts of the simulator's time series.
