"""Model back ends behind one streaming interface: `providers.base` (the interface and its
value types), `providers.factory.make_provider`, one module per back end. The package
imports nothing itself, so a module that needs `base` does not load the model SDKs."""
