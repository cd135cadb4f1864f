"""The fault campaign: scenarios that inject faults and count what was lost."""
