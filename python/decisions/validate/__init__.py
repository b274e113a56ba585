"""decisions.validate"""
