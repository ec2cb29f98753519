"""Grading: which answer a reply commits to (numbers, option letters, LaTeX math) and whether it
equals the gold; `graders` picks the grader for a sample, `outcome` holds a grading with its reasons."""
