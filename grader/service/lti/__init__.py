"""LTI 1.3: the service as a tool an LMS (Canvas, Moodle) launches (DEPLOYMENT.md, "LMS (LTI 1.3)")."""
