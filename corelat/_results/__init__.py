"""_results"""
