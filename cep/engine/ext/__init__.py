"""Siddhi 3.2's standard stream-processor extensions (`#reorder:kslack`, `#markov:markovChain`,
`#timeseries:*`) and the Kalman filter of `kf:kalmanFilter`, with the Java originals'
semantics. Entries: cep.catalog.ext_processors."""
