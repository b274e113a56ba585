"""decisions.stream"""
