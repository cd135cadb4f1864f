"""The fault campaign of issue 16: scenarios that inject faults and count what was lost."""
