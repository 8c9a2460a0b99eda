//! The field's balancers, implemented from the reference descriptions (shared/reference/load-balancers.md).
