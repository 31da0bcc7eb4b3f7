"""Example NRI plugins built on nri.stub."""
