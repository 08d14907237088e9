"""The texts the embedder tests embed, and the cosine they compare vectors by."""

import numpy as np

ALI = "Prefers 'Ali': Alice asked to be called Ali."
STANDUP = "Daily standup at 9:30"
CAT = "The user's cat is named Miso and sleeps on the keyboard."
PARIS = "The capital of France is Paris."
TEXTS = [ALI, STANDUP, CAT, "Deploys happen on Fridays only after review.", "Allergic to peanuts."]


def cos(a, b):
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))
