"""decisions.recover"""
