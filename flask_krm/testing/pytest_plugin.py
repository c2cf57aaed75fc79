"""pytest plugin for host applications (fixtures arrive with the simulator)."""
