"""decisions.request"""
