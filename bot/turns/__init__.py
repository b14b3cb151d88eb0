"""One chat's turns: lanes, the working set, the agent runner and its tools."""
