"""The engine pool every command shares: engines in the driver or in long-lived Ray actors, Ray's start-up and teardown, and sentence encoders hosted beside the engines."""
